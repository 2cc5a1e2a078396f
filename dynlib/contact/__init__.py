"""Contact models and contact inverse dynamics."""
