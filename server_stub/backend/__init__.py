"""Target backends: the interface (``base``) and its implementations."""
