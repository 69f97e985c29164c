"""Stand-in third-party ``kernels`` package (not swafuzz's)."""

STANDIN = "third-party kernels stand-in"
__version__ = "0.0.1"
