"""Core package that implements generators runtime."""
