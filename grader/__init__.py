"""A safe, fast autograder for PyTorch course assignments."""

__version__ = "0.1.0"
