"""What the demo sections share: matplotlib, headless, when plots are asked for."""


def headless_pyplot(outdir):
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or None.

    None when ``outdir`` is None (no plots asked for) or matplotlib is not installed.
    """
    if outdir is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def epoch_progress(every=5.0):
    """A skorch callback printing ``epoch k/n`` at most every ``every`` seconds.

    Long fits in the demo pass it in ``callbacks`` so that no step is silent for long;
    a fit shorter than ``every`` prints nothing.
    """
    import time

    from skorch.callbacks import Callback

    class EpochProgress(Callback):
        def on_train_begin(self, net, **kwargs):
            self.last_ = time.perf_counter()

        def on_epoch_end(self, net, **kwargs):
            if time.perf_counter() - self.last_ >= every:
                self.last_ = time.perf_counter()
                row = net.history[-1]
                loss = f", train loss {row['train_loss']:.4g}" if "train_loss" in row else ""
                print(f"    epoch {row['epoch']}/{net.max_epochs}{loss}", flush=True)

    return EpochProgress()
