"""Refuse requests that cannot fit in memory before starting them, with the way around."""

import os


def available_memory():
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(n_bytes, what, cure):
    """Raise a MemoryError up front when ``what`` needs more than the memory available.

    Better than an allocator error after minutes of work: the message states the
    estimated size, what is available and the option that avoids it (``cure``).
    """
    available = available_memory()
    if available is not None and n_bytes > available:
        raise MemoryError(f"{what} needs about {n_bytes / 2**30:.1f} GiB but "
                          f"{available / 2**30:.1f} GiB are available; {cure}.")
