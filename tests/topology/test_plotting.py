"""PersistenceDiagramDisplay draws what the diagrams hold."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")


def test_diagram_and_barcode():
    import matplotlib.pyplot as plt

    from geolearn.plotting import PersistenceDiagramDisplay
    from geolearn.topology import persistence_diagrams

    dgms = [np.array([[0, 0.5], [0, 1.0], [0, np.inf]]), np.array([[0.4, 2.0]])]
    disp = PersistenceDiagramDisplay.from_results(dgms)
    assert disp.inf_value_ == pytest.approx(2.2)
    np.testing.assert_allclose(disp.artists_[0].get_offsets(), [[0, 0.5], [0, 1], [0, 2.2]])
    np.testing.assert_allclose(disp.artists_[1].get_offsets(), [[0.4, 2.0]])
    fig, ax = plt.subplots()
    bars = PersistenceDiagramDisplay(dgms, homology_dimensions=[0, 1]).plot(ax=ax,
                                                                            kind="barcode")
    assert bars.ax_ is ax
    segs = bars.artists_[0].get_segments()
    assert len(segs) == 3 and segs[2][1, 0] == pytest.approx(2.2)   # the infinite bar
    circle = PersistenceDiagramDisplay.from_results(persistence_diagrams(
        np.c_[np.cos(np.arange(12) / 1.91), np.sin(np.arange(12) / 1.91)]))
    assert len(circle.artists_[1].get_offsets()) == 1
    with pytest.raises(ValueError, match="kind"):
        disp.plot(kind="landscape")
    with pytest.raises(ValueError, match="homology_dimensions"):
        PersistenceDiagramDisplay(dgms, homology_dimensions=[1])
    plt.close("all")
