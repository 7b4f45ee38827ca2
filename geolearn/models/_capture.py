"""Reading one layer of a shared module: per-thread captures behind inert hooks."""

import threading


class _StopForward(Exception):
    """Raised by a forward hook to skip the layers after the one being read."""


def _first(out):
    # modules such as VAEs return tuples; the first element is the primary output
    return out[0] if isinstance(out, (tuple, list)) else out


# -- reading a layer: hooks that act only for the call that wants them ------------------------
#
# A layer is read by a forward hook that stores its output and stops the forward pass. Hooks
# live on the (shared) module, so a hook registered for one call fires in every thread's
# forward pass through that module. Here a hook is an inert dispatcher, and what a call wants
# is kept per thread: the dispatcher acts only for the innermost capture of the thread running
# the forward pass (torch.func transforms run in the calling thread), and a call catches only
# its own _StopForward. A dispatcher is put on a layer when a call first reads it and stays
# until no adapter call at all is in flight (one process-wide count, under a lock), when every
# dispatcher is removed: torch iterates a module's hook dict during its forward pass, and that
# dict must not change under a running adapter call; and the model carries no hooks once idle.
# (torch's hook dicts are not thread-safe, so a forward pass the user runs directly, outside
# the adapter, at the moment a dispatcher is added or the last call ends can still see one
# change; as can a layer carrying the user's own hooks when its dispatcher is first added.)

_HOOK_LOCK = threading.Lock()
_HOOKS = {}  # (id(layer), pre) -> (layer, handle)
_IN_FLIGHT = [0]  # adapter forward passes running, all threads
_LOCAL = threading.local()


class _Capture:
    """What one call wants from its forward pass: the output (or input) of ``target``."""

    __slots__ = ("out", "pre", "target")

    def __init__(self, target, pre):
        self.target, self.pre, self.out = target, pre, None


def _active_capture():
    stack = getattr(_LOCAL, "captures", None)
    return stack[-1] if stack else None


def _dispatch_forward(module, inputs, output):
    cap = _active_capture()
    if cap is not None and cap.target is module and not cap.pre:
        cap.out = _first(output)
        raise _StopForward(cap)


def _dispatch_pre(module, inputs):
    cap = _active_capture()
    if cap is not None and cap.target is module and cap.pre:
        cap.out = inputs[0]
        raise _StopForward(cap)


def _start_pass(target, pre):
    with _HOOK_LOCK:
        _IN_FLIGHT[0] += 1
        if target is not None and (id(target), pre) not in _HOOKS:
            handle = (target.register_forward_pre_hook(_dispatch_pre) if pre
                      else target.register_forward_hook(_dispatch_forward))
            _HOOKS[id(target), pre] = (target, handle)


def _end_pass():
    with _HOOK_LOCK:
        _IN_FLIGHT[0] -= 1
        if _IN_FLIGHT[0] == 0:
            for _, handle in _HOOKS.values():
                handle.remove()
            _HOOKS.clear()


def _run_capturing(module, x, target, pre=False):
    """``module(x)``, stopped at ``target``: its output (its input when ``pre``), and whether
    it was reached; the model output when ``target`` is None. Safe when other threads run the
    same module meanwhile.
    """
    cap = _Capture(target, pre)
    _start_pass(target, pre)
    stack = getattr(_LOCAL, "captures", None)
    if stack is None:
        stack = _LOCAL.captures = []
    stack.append(cap)  # also for target None: an outer call's target is not this pass's
    try:
        out = module(x)
    except _StopForward as stop:
        if not stop.args or stop.args[0] is not cap:
            raise
        return cap.out, True
    finally:
        stack.pop()
        _end_pass()
    return _first(out), target is None

