"""KWOK provider for nodewright."""
