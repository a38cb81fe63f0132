"""Directives and roles a page author writes whose output no other part of the site shows.

Each module is one family: its directive classes, what only they render, and a
``setup_*`` the extension's ``setup`` calls. Nothing else in the extension imports
a module of this folder (tests/test_layout.py): what a view or the build shares
lives in ``views/`` or ``build/``.
"""
