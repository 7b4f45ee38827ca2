"""The main job, ``python -m geolearn.demo``: every family on bundled data, quick by default.

Each family adds a module ``geolearn/demo/<family>.py`` with a ``TITLE`` string,
``SECONDS = (quick, full)``, its measured time on two idle cores in each mode, and a
``run(outdir, *, full=False)`` function that prints its report lines (a line before
each step that takes more than a moment) and returns nothing; it saves plots under
``outdir`` when that is not None. ``full=True`` trains longer, closer to the papers.
Sections run in alphabetical order of their module names; ``--list`` shows them.
"""
