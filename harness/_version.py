"""The installed distribution's version: `tracegrade.__version__` and `tracegrade --version`."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("tracegrade")
except PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
