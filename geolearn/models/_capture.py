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
    """What one call wants from its forward pass: the output (or input) of the first of
    ``targets`` reached, and which one that was; or, collecting, the outputs of them all."""

    __slots__ = ("collected", "out", "pre", "reached", "targets")

    def __init__(self, targets, pre, collect=False):
        self.targets, self.pre, self.out, self.reached = targets, pre, None, None
        self.collected = {} if collect else None

    def catch(self, module, value):
        if not any(t is module for t in self.targets):
            return
        if self.collected is None:
            self.out, self.reached = value, module
            raise _StopForward(self)
        self.collected.setdefault(module, value)  # a module called twice: its first call
        if len(self.collected) == len(self.targets):
            raise _StopForward(self)


def _active_capture():
    stack = getattr(_LOCAL, "captures", None)
    return stack[-1] if stack else None


def _dispatch_forward(module, inputs, output):
    cap = _active_capture()
    if cap is not None and not cap.pre:
        cap.catch(module, _first(output))


def _dispatch_pre(module, inputs):
    cap = _active_capture()
    if cap is not None and cap.pre:
        cap.catch(module, inputs[0])


def _start_pass(targets, pre):
    with _HOOK_LOCK:
        _IN_FLIGHT[0] += 1
        for target in targets:
            if (id(target), pre) not in _HOOKS:
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
    out, reached = _run(module, x, _Capture(() if target is None else (target,), pre))
    return out, reached is not None or target is None


def _run_to_first(module, x, layers):
    """``(layer, its input)``: the first of ``layers`` that ``module(x)`` reaches, the pass
    stopped there; ``(None, output)`` when it reaches none of them."""
    out, reached = _run(module, x, _Capture(tuple(layers), pre=True))
    return reached, out


def _run_collecting(module, x, targets):
    """``{target: output}`` of each of ``targets`` that ``module(x)`` reaches, in one pass that
    stops once it has them all."""
    cap = _Capture(tuple(dict.fromkeys(targets)), pre=False, collect=True)
    _run(module, x, cap)
    return cap.collected


def _run(module, x, cap):
    _start_pass(cap.targets, cap.pre)
    stack = getattr(_LOCAL, "captures", None)
    if stack is None:
        stack = _LOCAL.captures = []
    stack.append(cap)  # also without targets: an outer call's targets are not this pass's
    try:
        out = module(x)
    except _StopForward as stop:
        if not stop.args or stop.args[0] is not cap:
            raise
        return cap.out, cap.reached
    finally:
        stack.pop()
        _end_pass()
    return _first(out), None

