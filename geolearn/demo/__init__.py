"""The main job, ``python -m geolearn.demo``: every family on bundled data in a few seconds.

Each family adds a module ``geolearn/demo/<family>.py`` with a ``TITLE`` string and a
``run(outdir)`` function that prints its report lines and returns nothing; it
saves plots under ``outdir`` when matplotlib is installed. Sections run in
alphabetical order of their module names.
"""
