"""The version of milopt, defined once (``milopt.__version__`` is this value); a module below
every other, so that a solver adapter can report it without importing the root package."""
#: the version of this milopt
__version__ = "0.1.0"
