"""Built-in example studies. ``sort_digits``: the small transformer behind ``evalab demo``."""
