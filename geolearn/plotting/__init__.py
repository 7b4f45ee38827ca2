"""Display classes, one per kind of picture (matplotlib, imported lazily).

Each family adds ``geolearn/plotting/_<family>.py`` and exports its Displays here.
Displays follow scikit-learn's convention: ``Display.from_estimator(...)`` or
``Display.from_result(...)`` computes, ``.plot(ax=None)`` draws and returns self,
with ``ax_``, ``figure_`` and the artists as attributes.
"""

from ._base import check_matplotlib

# one line per family: from ._<family> import SomeDisplay, OtherDisplay
