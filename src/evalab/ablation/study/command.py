"""A command study's ``[study] command`` and ``args_style``: the template checked against
every trained row's configuration."""

from __future__ import annotations

from typing import Any

from evalab.ablation.contract.template import (
    ARGS_STYLES,
    CommandTemplate,
    TemplateError,
    parse_template,
)
from evalab.ablation.study.grid import grid_cells
from evalab.ablation.study.spec import Variant
from evalab.ablation.study.where import Where
from evalab.errors import SettingsError


def parse_command(
    st: dict[str, Any], command: Any, configs: list[dict[str, Any]], w: Where
) -> CommandTemplate | None:
    """The parsed command template, checked against every trained row's configuration:
    each placeholder names a key, and each row's value can be written where it stands."""
    style = st.get("args_style", "hydra")
    if style not in ARGS_STYLES:
        raise w.error(
            "[study] args_style",
            f'is {style!r}; expected "hydra" (key=value) or "argparse" (--key value)',
            "args_style",
            "study",
        )
    if command is None:
        if "args_style" in st:
            raise w.error(
                "[study] args_style",
                "is for command templates ({args}); this study has an entry point",
                "args_style",
                "study",
            )
        return None
    if not isinstance(command, str) or not command.strip():
        raise w.error("[study] command", "must be a non-empty string", "command", "study")
    try:
        template = parse_template(command, style)
        template.check_keys(configs[0])
        for config in configs:
            template.render(config, 0, "config.json", "metrics.json")
    except TemplateError as exc:
        raise _template_error(command, exc, w) from None
    if "out" not in template.names():
        raise w.error(
            "[study] command",
            "must contain {out}: the path of the JSON metrics file the command writes",
            "command",
            "study",
        )
    return template


def _template_error(command: str, exc: TemplateError, w: Where) -> SettingsError:
    """The template's problem at the line of the study file it stands on."""
    line = w.line_of("command", "study")
    if line is not None:
        # a multi-line string whose first line break follows the opening quotes is trimmed by TOML
        trimmed = w.lines[line - 1].split("=", 1)[-1].strip() in ("'''", '"""')
        line += command.count("\n", 0, max(exc.offset, 0)) + trimmed
    loc = f"{w.path}:{line}" if line else str(w.path)
    return SettingsError(f"{loc}: [study] command: {exc}")


def trained_configs(
    base: dict[str, Any], variants: list[Variant], grid: dict[str, list[Any]]
) -> list[dict[str, Any]]:
    """The configurations a command runs with: the base's, each trained variant's, each grid cell's."""
    return [
        dict(base),
        *({**base, **v.settings} for v in variants if v.stage == "train"),
        *(dict(c.config) for c in grid_cells(base, grid)),
    ]
