"""Damage detected and contained: checksums of what the store commits, the checks
``verify`` and ``health`` run, a store opened at its newest readable version, and tables
read fragment by fragment so what can be read is."""
