"""The dynamics algorithms, one module each (see STYLE.md)."""
