"""The package version (one place; lower layers import it from here, not from the package root)."""
__version__ = "0.1.0"
