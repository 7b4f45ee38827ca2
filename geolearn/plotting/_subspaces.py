"""Displays of the subspaces family: SVBF convergence and principal angles to a variety."""

import numpy as np

from ._base import axes_or_new


class SVBFConvergenceDisplay:
    """Objective per iteration of an :class:`~geolearn.subspaces.SVBF` fit.

    Parameters
    ----------
    objective_curve : array-like of shape (t,)
        ``F`` at each iterate (``SVBF.objective_curve_``).
    init_objectives : array-like of shape (n_init,), default=None
        Final objective of every restart, drawn as points after the curve's end.

    Attributes
    ----------
    line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.plotting import SVBFConvergenceDisplay
    >>> from geolearn.subspaces import SVBF
    >>> X = np.linalg.qr(np.random.default_rng(0).normal(size=(20, 8, 2)))[0]
    >>> svbf = SVBF(2, init="random", n_init=2, random_state=0).fit(X)
    >>> disp = SVBFConvergenceDisplay.from_estimator(svbf)   # doctest: +SKIP
    """

    def __init__(self, objective_curve, init_objectives=None):
        self.objective_curve = np.asarray(objective_curve, dtype=float)
        self.init_objectives = init_objectives

    @classmethod
    def from_estimator(cls, estimator, *, ax=None):
        """Plot the kept run's objective curve of a fitted SVBF."""
        return cls(estimator.objective_curve_, estimator.init_objectives_).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the curve; returns self."""
        self.figure_, self.ax_ = axes_or_new(ax)
        (self.line_,) = self.ax_.plot(np.arange(len(self.objective_curve)),
                                      self.objective_curve, marker=".", label="kept run")
        if self.init_objectives is not None:
            # restarts often end at the kept run's value, where a line would hide behind the
            # curve: mark them past its end and list them in the legend
            finals = np.asarray(self.init_objectives, dtype=float)
            self.ax_.scatter(np.full(len(finals), len(self.objective_curve)), finals,
                             marker="D", color="C3", zorder=3,
                             label=f"final F of the {len(finals)} restarts: "
                                   + ", ".join(f"{v:.3f}" for v in finals))
        self.ax_.set_xlabel("iteration")
        self.ax_.set_ylabel("objective F (1 = every set meets W)")
        self.ax_.set_title("SVBF convergence")
        self.ax_.legend(loc="lower right", fontsize="small")
        return self


class PrincipalAnglesDisplay:
    """Principal angles between sets and a fitted variety: one point per set and angle.

    Parameters
    ----------
    angles : array-like of shape (r, m)
        Ascending angles in radians (``SVBF.angles_``, ``SVBF.transform`` with
        ``transform_output="angles"`` or :func:`~geolearn.subspaces.principal_angles`).
    labels : array-like of shape (r,), default=None
        Colour the sets by label.

    Attributes
    ----------
    lines_ : list of matplotlib Line2D
        One marker-only artist per label.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.plotting import PrincipalAnglesDisplay
    >>> angles = np.sort(np.random.default_rng(0).uniform(0, 1.5, size=(10, 3)), axis=1)
    >>> disp = PrincipalAnglesDisplay.from_results(angles)    # doctest: +SKIP
    """

    def __init__(self, angles, labels=None):
        self.angles = np.atleast_2d(np.asarray(angles, dtype=float))
        self.labels = labels

    @classmethod
    def from_estimator(cls, estimator, X=None, *, labels=None, ax=None):
        """Angles of the training sets (``X=None``) or of new sets ``X`` to ``estimator``."""
        if X is None:
            angles = estimator.angles_
        else:
            from geolearn.subspaces import principal_angles

            angles = principal_angles(X, estimator.basis_)
        return cls(angles, labels).plot(ax=ax)

    @classmethod
    def from_results(cls, angles, *, labels=None, ax=None):
        """Plot precomputed angles."""
        return cls(angles, labels).plot(ax=ax)

    def plot(self, ax=None):
        """Draw each angle in degrees at its index, one point per set; returns self."""
        self.figure_, self.ax_ = axes_or_new(ax)
        degrees = np.degrees(self.angles)
        index = np.arange(1, degrees.shape[1] + 1)
        labels = (np.zeros(len(degrees), dtype=int) if self.labels is None
                  else np.asarray(self.labels))
        classes = np.unique(labels)
        colours = {c: f"C{i % 10}" for i, c in enumerate(classes)}
        # angle j of every set as a strip of points at x = j, jittered so that they do not
        # overlap: the angles of one set are not a series, so no line joins them
        jitter = np.random.default_rng(0).uniform(-0.15, 0.15, size=degrees.shape)
        self.lines_ = []
        for c in classes:
            rows = labels == c
            (line,) = self.ax_.plot((index + jitter[rows]).ravel(), degrees[rows].ravel(),
                                    ls="none", marker="o", ms=3, alpha=0.5, color=colours[c],
                                    label=str(c))
            self.lines_.append(line)
        if self.labels is not None:
            self.ax_.legend(title="label")
        self.ax_.set_xticks(index)
        self.ax_.set_xlabel("principal angle index j")
        self.ax_.set_ylabel("theta_j (degrees)")
        self.ax_.set_ylim(-2, 92)
        self.ax_.set_title("principal angles between the sets and W")
        return self
