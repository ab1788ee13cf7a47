"""classifiers."""
