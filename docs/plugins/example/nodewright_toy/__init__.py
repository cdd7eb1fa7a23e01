"""A toy nodewright provider: machines in an imaginary cloud, kept in memory."""
