"""The provider × scenario tests that pytest collects (one cell each)."""
