"""``geometry_report``: every measure that applies to one model or several, in one call."""

import base64
import html
import inspect
import io

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_scalar_param
from ..models import GradientsUnavailableError
from ._measures import MEASURES, MeasureUnavailableError, evaluate_measure, resolve_measures

_COLUMNS = ["model", "measure", "layer", "value", "interval", "reason"]


def _pandas():
    try:
        import pandas
    except ImportError as exc:
        raise ImportError('GeometryReport tables need pandas: pip install "geolearn[report]".'
                          ) from exc
    return pandas


def _per_layer(func):
    try:
        return "layer" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


class GeometryReport:
    """The measures of :func:`geometry_report`, as a table, a figure or an HTML page.

    Parameters
    ----------
    rows : list of dict
        One per (model, measure, layer): ``model``, ``measure``, ``layer``
        (``"output"`` for the model's output), ``value`` (NaN when skipped),
        ``interval`` (``(low, high)`` or None) and ``reason`` (why the measure
        was skipped; None when it was computed, missing in :meth:`to_frame`).

    Attributes
    ----------
    rows : list of dict
    models : list of str
        The models' names, in the order given.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.inspection import geometry_report
    >>> X = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    >>> report = geometry_report(net, X, measures=["log_volume", "relative_stability"])
    >>> report
    GeometryReport(1 model(s), 1 measure(s) computed, 1 skipped)
    >>> print(report.to_frame().set_index("measure").loc["relative_stability", "reason"])
    no images: relative_stability needs image_shape, or X of shape (n, C, H, W).
    """

    def __init__(self, rows):
        self.rows = rows
        self.models = list(dict.fromkeys(row["model"] for row in rows))

    def __repr__(self):
        done = sum(row["reason"] is None for row in self.rows)
        return (f"GeometryReport({len(self.models)} model(s), {done} measure(s) computed, "
                f"{len(self.rows) - done} skipped)")

    def to_frame(self, layout="long"):
        """The table, as a pandas DataFrame.

        Parameters
        ----------
        layout : {"long", "wide"}, default="long"
            ``"long"``: one tidy row per (model, measure, layer), columns
            ``model, measure, layer, value, interval, reason``. ``"wide"``: one
            row per (measure, layer) and one column of values per model, side
            by side.

        Returns
        -------
        frame : pandas.DataFrame

        Examples
        --------
        >>> import numpy as np, torch
        >>> from geolearn.inspection import geometry_report
        >>> X = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
        >>> nets = {name: torch.nn.Sequential(torch.nn.Linear(2, w), torch.nn.ReLU(),
        ...                                   torch.nn.Linear(w, 2)) for name, w in
        ...         [("narrow", 4), ("wide", 64)]}
        >>> geometry_report(nets, X, measures="region_density").to_frame("wide").columns.tolist()
        ['narrow', 'wide']
        """
        pd = _pandas()
        frame = pd.DataFrame(self.rows, columns=_COLUMNS)
        if layout == "long":
            return frame
        if layout != "wide":
            raise ValueError(f"layout must be 'long' or 'wide'; got {layout!r}.")
        wide = frame.pivot(index=["measure", "layer"], columns="model", values="value")
        return wide[self.models].rename_axis(columns=None)

    def plot(self, axes=None):
        """Bar charts of the computed measures, one panel per measure, a bar per model and layer.

        Parameters
        ----------
        axes : array of matplotlib Axes, default=None
            One per computed measure; a new row of panels by default.

        Returns
        -------
        figure : matplotlib Figure

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np, torch
        >>> from geolearn.inspection import geometry_report
        >>> X = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> fig = geometry_report(net, X, measures=["region_density", "rdm_similarity"],
        ...                       measure_params={"rdm_similarity": {"metric": "euclidean"}},
        ...                       y=X[:, 0] > 0).plot()
        >>> len(fig.axes)
        2
        """
        from ..plotting import check_matplotlib

        done = [row for row in self.rows if row["reason"] is None]
        measures = list(dict.fromkeys(row["measure"] for row in done))
        if not measures:
            raise ValueError("no measure was computed: nothing to plot (see the reasons in "
                             "to_frame()).")
        if axes is None:
            plt = check_matplotlib("GeometryReport.plot")
            _, axes = plt.subplots(1, len(measures), figsize=(3.5 * len(measures), 3),
                                   squeeze=False)
        axes = np.asarray(axes, dtype=object).ravel()
        if len(axes) != len(measures):
            raise ValueError(f"axes holds {len(axes)} Axes; {len(measures)} measures were "
                             "computed.")
        figure = axes[0].figure
        for ax, measure in zip(axes, measures):
            rows = [row for row in done if row["measure"] == measure]
            labels = [row["model"] if row["layer"] == "output"
                      else f"{row['model']}\n{row['layer']}" for row in rows]
            values = np.array([row["value"] for row in rows])
            low = [row["value"] - row["interval"][0] if row["interval"] else 0.0 for row in rows]
            high = [row["interval"][1] - row["value"] if row["interval"] else 0.0 for row in rows]
            ax.bar(range(len(rows)), values, yerr=[low, high], color="C0", capsize=3)
            ax.set_xticks(range(len(rows)), labels, fontsize=8)
            ax.set_title(measure)
        figure.tight_layout()
        return figure

    def to_html(self, path):
        """Write one self-contained HTML page: the figure (embedded PNG) and the table.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        path : str or path-like
            ``path``, as given.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import pathlib, tempfile
        >>> import numpy as np, torch
        >>> from geolearn.inspection import geometry_report
        >>> X = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        >>> page = pathlib.Path(tempfile.mkdtemp()) / "report.html"
        >>> _ = geometry_report(net, X, measures="log_volume").to_html(page)
        >>> "data:image/png;base64," in page.read_text()
        True
        """
        from ..plotting import check_matplotlib

        plt = check_matplotlib("GeometryReport.to_html")
        parts = [f"<h1>Geometry report: {html.escape(', '.join(self.models))}</h1>"]
        if any(row["reason"] is None for row in self.rows):
            figure = self.plot()
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=100)
            plt.close(figure)
            png = base64.b64encode(buffer.getvalue()).decode("ascii")
            parts.append(f'<img alt="measures" src="data:image/png;base64,{png}">')
        if len(self.models) > 1:
            parts += ["<h2>Side by side</h2>", self.to_frame("wide").to_html()]
        parts += ["<h2>All measures</h2>", self.to_frame().to_html(index=False, na_rep="")]
        page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Geometry report"
                "</title></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        return path


def geometry_report(model, X, y=None, *, image_shape=None, layers=None, measures="auto",
                    measure_params=None, max_probes=256, random_state=0):
    """Every geometry measure that applies to a model (or to several, side by side).

    Each measure is computed on the same probes through
    :func:`geolearn.models.as_model` under its ``frozen()`` context (the
    model's mode and parameters are left as they were). A measure that does
    not apply (no gradients for a black box, not a ReLU net, no images, no
    labels) is skipped and its reason recorded.

    Parameters
    ----------
    model : model, or dict of str to model
        Anything :func:`geolearn.models.as_model` accepts (a torch module, a
        fitted skorch net or estimator, a black-box scikit-learn model); a dict
        ``{name: model}`` compares checkpoints or architectures.
    X : array-like of shape (n_samples, ...)
        The probes, in the layout the models take.
    y : array-like of shape (n_samples,), default=None
        Their labels (for ``"rdm_similarity"``).
    image_shape : tuple of int, default=None
        Layout of flat rows as images, for the image measures.
    layers : list of str, default=None
        Layers of the per-layer measures (``"log_volume"``, ``"rdm_similarity"``);
        None measures the model's output only.
    measures : "auto", str, callable, list or dict, default="auto"
        ``"auto"``: every measure of :data:`MEASURES`; else as
        :class:`GeometryTracker`'s ``measures``.
    measure_params : dict of str to dict, default=None
        Keyword arguments of each measure, by name.
    max_probes : int, default=256
        At most this many probes, drawn from ``X`` with ``random_state``.
    random_state : int, RandomState or None, default=0
        Draws the probes; passed to the measures that take one.

    Returns
    -------
    report : GeometryReport

    See Also
    --------
    GeometryTracker : the same measures recorded during training.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.svm import SVC
    >>> from geolearn.inspection import geometry_report
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> models = {"svm": SVC().fit(X, y),
    ...           "mlp": torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(),
    ...                                      torch.nn.Linear(8, 3))}
    >>> frame = geometry_report(models, X, y).to_frame()
    >>> frame.loc[frame.reason.isna(), ["model", "measure"]].values.tolist()
    [['mlp', 'log_volume'], ['mlp', 'rdm_similarity']]
    >>> print(frame.loc[(frame.model == "svm") & (frame.measure == "log_volume"), "reason"].item())
    no gradients: ...
    """
    models = model if isinstance(model, dict) else {_name(model): model}
    if not models:
        raise ValueError("model is an empty dict: pass at least one model.")
    check_scalar_param(max_probes, "max_probes", kind="integer", low=1)
    resolved = dict(MEASURES) if (isinstance(measures, str) and measures == "auto") \
        else resolve_measures(measures)
    X = np.asarray(X)
    y = None if y is None else np.asarray(y)
    if len(X) > max_probes:
        keep = np.sort(check_random_state(random_state).choice(len(X), max_probes,
                                                                replace=False))
        X, y = X[keep], (None if y is None else y[keep])
    params = measure_params or {}
    layer_list = [None] if layers is None else list(layers)
    rows = []
    for name, m in models.items():
        for measure, func in resolved.items():
            for layer in (layer_list if _per_layer(func) else [None]):
                context = {"image_shape": image_shape, "layer": layer,
                           "random_state": random_state}
                row = {"model": name, "measure": measure,
                       "layer": "output" if layer is None else str(layer),
                       "value": np.nan, "interval": None, "reason": None}
                try:
                    row["value"], row["interval"] = evaluate_measure(
                        measure, func, m, X, y, context=context, params=params.get(measure))
                except (MeasureUnavailableError, GradientsUnavailableError) as exc:
                    row["reason"] = str(exc)
                rows.append(row)
    return GeometryReport(rows)


def _name(model):
    return type(model).__name__
