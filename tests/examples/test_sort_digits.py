"""The built-in study's model and training (evalab.examples.sort_digits) and its study file.

The full study is not run here (minutes); these check the pieces it is made of: training
lowers the loss, a seed reproduces its numbers, bad settings are refused, and the shipped
study file loads with the ablation engine and describes the seed's rows.
"""

from __future__ import annotations

import doctest
import math

import pytest

torch = pytest.importorskip("torch")

from evalab.errors import SettingsError  # noqa: E402
from evalab.examples.sort_digits import entry, model, study_path, train  # noqa: E402
from evalab.examples.sort_digits.train import (  # noqa: E402
    SortConfig,
    evaluate,
    held_out,
    isolated_torch,
    run_one,
)

# small enough to train in a second or two on a loaded CPU
TINY = {"d_model": 16, "heads": 2, "d_ff": 32, "steps": 8, "warmup": 2, "eval_size": 64}


def test_training_lowers_the_loss_and_the_held_out_cross_entropy():
    cfg = SortConfig(steps=40, warmup=5, eval_size=200)
    with isolated_torch(0):
        untrained = evaluate(train.build_model(cfg), cfg)
    with isolated_torch(0):
        result = train.train(cfg, 0)
        after = evaluate(result.model, cfg)
    first, last = result.losses[:5], result.losses[-5:]
    assert len(result.losses) == 40
    assert sum(last) / 5 < sum(first) / 5 - 0.5, result.losses
    assert after["xent"] < untrained["xent"] - 0.3
    assert after["digit_acc"] > untrained["digit_acc"]
    # ppl is exp of the mean token cross-entropy, computed by evalab.nll
    assert after["ppl"] == pytest.approx(math.exp(after["xent"]), rel=1e-12)


def test_same_seed_same_metrics_other_seed_other_metrics():
    a = entry.run(TINY, seed=3)
    b = entry.run(dict(TINY), seed=3)
    c = entry.run(TINY, seed=4)
    assert a == b
    assert a != c
    assert set(a) == {"seq_acc", "digit_acc", "xent", "ppl", "per_example"}
    assert all(isinstance(a[m], float) and math.isfinite(a[m]) for m in entry.METRICS)
    assert 0.0 <= a["seq_acc"] <= 100.0 and 0.0 <= a["digit_acc"] <= 100.0


def test_a_run_leaves_torch_global_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    entry.run(TINY, seed=0)
    assert torch.equal(torch.rand(3), expected)  # the caller's RNG stream is untouched
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic


def test_held_out_set_is_fixed_and_targets_are_sorted():
    cfg = SortConfig(eval_size=50)
    src1, tgt1 = held_out(cfg)
    src2, tgt2 = held_out(cfg)
    assert torch.equal(src1, src2) and torch.equal(tgt1, tgt2)
    assert torch.equal(tgt1, src1.sort(dim=1).values)
    assert not torch.equal(held_out(SortConfig(eval_size=50, eval_seed=1))[0], src1)


def test_metrics_are_computed_from_greedy_decodings():
    # a model that always answers correctly scores 100 / 100; checked by swapping greedy
    cfg = SortConfig(**{k: v for k, v in TINY.items()})
    with isolated_torch(0):
        m = train.build_model(cfg)
    m.greedy = lambda src, length: src.sort(dim=1).values  # type: ignore[method-assign]
    metrics = evaluate(m, cfg)
    assert metrics["seq_acc"] == 100.0 and metrics["digit_acc"] == 100.0
    m.greedy = lambda src, length: src.sort(dim=1, descending=True).values  # type: ignore[method-assign]
    assert evaluate(m, cfg)["seq_acc"] < 5.0


def test_no_positional_encoding_makes_the_encoder_order_blind():
    # Without positions self-attention is permutation-equivariant: permuting the input
    # permutes the encoder states. This is why sorting needs no positional encoding.
    src = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])
    perm = torch.tensor([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    for pe, blind in (("none", True), ("sin", False), ("learned", False)):
        torch.manual_seed(0)
        m = model.Sorter(
            vocab=10,
            max_len=10,
            d_model=16,
            heads=2,
            layers=1,
            d_ff=32,
            dropout=0.0,
            pos_encoding=pe,
        ).eval()
        with torch.no_grad():
            same = torch.allclose(m.encode(src)[:, perm], m.encode(src[:, perm]), atol=1e-5)
        assert same == blind, pe


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"head": 4}, "unknown setting 'head'"),
        ({"heads": 3}, "divisible by heads=3"),
        ({"pos_encoding": "rope"}, "pos_encoding='rope'"),
        ({"dropout": 1.0}, "dropout must be in [0, 1)"),
        ({"label_smoothing": -0.1}, "label_smoothing must be in [0, 1)"),
        ({"steps": 0}, "steps must be >= 1"),
        ({"warmup": 500}, "warmup must be in [0, steps=400]"),
        ({"heads": 4.0}, "'heads' must be int"),
        ({"heads": True}, "'heads' must be int"),
        ({"dropout": "0.1"}, "'dropout' must be float"),
        ({"pos_encoding": 0}, "'pos_encoding' must be str"),
        ({"lr": 0}, "lr must be > 0"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(config, message):
    with pytest.raises(SettingsError, match=r"sort_digits: .*" + __import__("re").escape(message)):
        entry.run(config, seed=0)


def test_bad_seed_and_non_table_config():
    with pytest.raises(SettingsError, match="seed must be an integer"):
        entry.run({}, seed="0")  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="configuration must be a table"):
        SortConfig.from_dict([("heads", 1)])  # type: ignore[arg-type]


def test_ints_are_accepted_for_float_settings():
    assert SortConfig.from_dict({"dropout": 0, "lr": 1}).dropout == 0.0


def test_shipped_study_loads_with_the_ablation_engine():
    from evalab.ablation import load_study, plan_runs, study_rows

    study = load_study(study_path())
    assert study.entry == "evalab.examples.sort_digits.entry:run"
    assert study.seeds == (0, 1, 2)
    assert study.primary == "seq_acc"
    assert study.higher_is_better == {
        "seq_acc": True,
        "digit_acc": True,
        "xent": False,
        "ppl": False,
    }
    rows = {r.label: r for r in study_rows(study)}
    assert list(rows) == [
        "base",
        "(A) h=1",
        "(A) h=8",
        "(A') 1 of 4 heads at eval",
        "(D) P_drop=0",
        "(D) P_drop=0.3",
        "(D) eps_ls=0",
        "(E) learned",
        "(E) none",
        "(E') positions removed at eval",
    ]
    assert rows["(A) h=1"].changes == {"heads": 1} and rows["(A) h=8"].changes == {"heads": 8}
    assert rows["(E) none"].changes == {"pos_encoding": "none"}
    assert study.evaluate == "evalab.examples.sort_digits.entry:evaluate"
    assert study.evaluation == entry.EVAL_DEFAULTS
    at_eval = {k: r for k, r in rows.items() if r.stage == "eval"}
    assert {k: (r.parent, r.changes) for k, r in at_eval.items()} == {
        "(A') 1 of 4 heads at eval": ("base", {"eval_heads": 1}),
        "(E') positions removed at eval": ("base", {"eval_positions": False}),
    }
    assert len(plan_runs(study)) == 8 * 3 + 2 * 3
    # every trained row's configuration is a valid, complete SortConfig: the file states the budget
    for row in rows.values():
        if row.stage == "eval":
            assert row.parent_config == rows["base"].config
            continue
        cfg = SortConfig.from_dict(row.config)
        assert set(row.config) == {f for f in SortConfig.__dataclass_fields__}
        assert cfg.d_model == 32 and cfg.steps == 400
    seed_ref = study.reference["one-seed seq_acc %"]
    assert seed_ref["(A) h=1"] == 43.4 and seed_ref["(D) P_drop=0.3"] == 12.3
    assert study.reference["paper BLEU (Table 3)"]["(A) h=8"] == 25.8


def test_quick_study_is_a_cut_down_copy():
    from evalab.ablation import load_study, plan_runs
    from evalab.cli.demo import QUICK_BUDGET, quick_study

    full = load_study(study_path())
    quick = quick_study(full)
    assert quick.name != full.name
    assert [v.label for v in quick.variants] == ["(A) h=1", "(A') 1 of 4 heads at eval"]
    assert len(plan_runs(quick)) == 6
    assert {k: quick.base[k] for k in QUICK_BUDGET} == QUICK_BUDGET
    assert set(quick.reference["paper BLEU (Table 3)"]) == {"base", "(A) h=1"}
    assert full.base["steps"] == 400  # the shipped study is not modified


def test_run_one_reports_training_time():
    metrics, result = run_one(SortConfig.from_dict(TINY), 0)
    assert metrics["train_seconds"] > 0 and len(result.losses) == TINY["steps"]


@pytest.mark.parametrize("module", [model, train, entry])
def test_docstring_examples(module):
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_evaluate_reloads_the_trained_model_and_never_trains(tmp_path, monkeypatch):
    trained = entry.run(TINY, 3, out_dir=str(tmp_path))
    assert (tmp_path / entry.CHECKPOINT).is_file()

    def no_training(*_a, **_k):
        raise AssertionError("evaluate must not train")

    monkeypatch.setattr(train, "train", no_training)
    monkeypatch.setattr(train, "run_one", no_training)
    # the default evaluation of the saved model gives the training run's own numbers
    assert entry.evaluate({**TINY, **entry.EVAL_DEFAULTS}, 3, str(tmp_path)) == trained
    with pytest.raises(SettingsError, match="another configuration or seed"):
        entry.evaluate({**TINY, "eval_heads": 1}, 4, str(tmp_path))
    with pytest.raises(SettingsError, match="another configuration or seed"):
        entry.evaluate({**TINY, "steps": 9}, 3, str(tmp_path))
    with pytest.raises(SettingsError, match=r"eval_heads must be an integer in \[0, heads=2\]"):
        entry.evaluate({**TINY, "eval_heads": 3}, 3, str(tmp_path))
    with pytest.raises(SettingsError, match="no trained model at"):
        entry.evaluate(TINY, 3, str(tmp_path / "nowhere"))


def test_masking_heads_zeroes_their_share_of_the_output_projection():
    from evalab.examples.sort_digits.suppress import keep_heads, without_positions

    with isolated_torch(0):
        m = train.build_model(SortConfig.from_dict({**TINY, "heads": 4}))
        m.eval()
        attn = m.encoder[0].attn
        x = torch.randn(2, 5, 16)
        full = attn(x, x)
        with keep_heads(m, 1):
            masked = attn(x, x)
            # by hand: heads 2-4 are feature slices 4..15 of the concatenation
            q, k, v = attn._split(attn.q(x)), attn._split(attn.k(x)), attn._split(attn.v(x))
            heads = torch.softmax(q @ k.transpose(-1, -2) / 2.0, -1) @ v
            cat = heads.transpose(1, 2).reshape(2, 5, 16)
            cat[..., 4:] = 0.0
            assert torch.allclose(masked, attn.out(cat), atol=1e-6)
        assert torch.equal(attn(x, x), full)  # undone on leaving the block
        src = torch.tensor([[1, 2, 3, 4, 5]])
        with without_positions(m):
            assert m.pos is None
            emb = m._embed(src)
        assert m.pos is not None and not torch.allclose(emb, m._embed(src))


def test_masking_heads_at_evaluation_lowers_seq_acc(tmp_path):
    # the direction the demo states and checks, at a budget a test can afford (one seed,
    # 100 steps: the base model already sorts some sequences, the masked one almost none)
    cfg = {"steps": 100, "warmup": 20, "eval_size": 300}
    trained = entry.run(cfg, 0, out_dir=str(tmp_path))
    masked = entry.evaluate({**cfg, "eval_heads": 1}, 0, str(tmp_path))
    assert trained["seq_acc"] > 3.0
    assert masked["seq_acc"] < trained["seq_acc"] and masked["xent"] > trained["xent"]
