"""Sphinx configuration of the ros_dynamics documentation.

Laid out as rosdoc2 builds ROS 2 Python packages (``rosdoc2 build --package-path .``): this
``doc/`` folder with ``conf.py`` and the pages, Markdown through MyST, the API pages from the
docstrings with autodoc. ``make docs`` builds it into ``doc/_build/html``; test/test_docs.py
builds it with warnings as errors. No network: no intersphinx.

rosdoc2 (``rosdoc2.yaml`` at the package root names this folder as ``sphinx_sourcedir``) copies
the folder into a directory of its own and runs this file from a wrapping ``conf.py`` there, so
paths below are taken from ``__file__`` of that copy; the package itself comes from its Python
path. It keeps only the extensions it knows unless ``allow_other_extensions`` is set, hence
``rosdoc2_settings`` (plain Sphinx ignores it).
"""
from pathlib import Path
import sys

DOC = Path(__file__).resolve().parent
sys.path[:0] = [str(DOC / '_ext'), str(DOC.parent)]   # the reference directives, the package

rosdoc2_settings = {'allow_other_extensions': True}

project = 'ros_dynamics'
author = 'ros_dynamics maintainers'
copyright = 'ros_dynamics maintainers, Apache-2.0'
release = '0.1.0'

extensions = ['myst_parser', 'sphinx.ext.autodoc', 'sphinx.ext.napoleon',
              'ros_dynamics_reference']
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build']
myst_heading_anchors = 3

autodoc_member_order = 'bysource'
autodoc_default_options = {'members': True, 'show-inheritance': True}
napoleon_google_docstring = True
napoleon_numpy_docstring = True

html_theme = 'alabaster'
html_title = 'ros_dynamics'
