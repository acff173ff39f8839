"""The code runs where ROS users run it: Humble (Python 3.10, NumPy 1.21, SciPy 1.8) and Jazzy
(Python 3.12, NumPy 1.26, SciPy 1.11) as well as NumPy 2.x here.

Python 3.10 cannot be installed on these machines, so the check is static: ruff parses every
file for Python 3.10 (``target-version`` in ``.ci/ruff.toml``: syntax of later versions, such as
``except*``, is an error; run by ``test_lint``), and this test reads every file's syntax tree for
the library names that came later than those versions (Python 3.11+, NumPy 1.22+ and 2.x, SciPy
1.9+) and for syntax ruff lets through.
"""
import ast
import os

import pytest
from robots import REPO

#: Names (``module.attribute`` or a bare module) that Python 3.10, NumPy 1.21 or SciPy 1.8 lack,
#: with the version that brought them.
LATER = {
    'tomllib': 'Python 3.11', 'typing.Self': 'Python 3.11', 'typing.Never': 'Python 3.11',
    'typing.assert_never': 'Python 3.11', 'typing.LiteralString': 'Python 3.11',
    'typing.Required': 'Python 3.11', 'typing.NotRequired': 'Python 3.11',
    'typing.Unpack': 'Python 3.11', 'typing.TypeVarTuple': 'Python 3.11',
    'typing.override': 'Python 3.12', 'datetime.UTC': 'Python 3.11',
    'enum.StrEnum': 'Python 3.11', 'asyncio.TaskGroup': 'Python 3.11',
    'contextlib.chdir': 'Python 3.11', 'hashlib.file_digest': 'Python 3.11',
    'math.cbrt': 'Python 3.11', 'math.exp2': 'Python 3.11', 'itertools.batched': 'Python 3.12',
    'ExceptionGroup': 'Python 3.11', 'BaseExceptionGroup': 'Python 3.11',
    'np.exceptions': 'NumPy 1.25', 'np.dtypes': 'NumPy 1.25', 'np.bool': 'NumPy 2.0 '
    '(removed in 1.24, back in 2.0)', 'np.concat': 'NumPy 2.0', 'np.vecdot': 'NumPy 2.0',
    'np.linalg.vecdot': 'NumPy 2.0', 'np.trapezoid': 'NumPy 2.0', 'np.isdtype': 'NumPy 2.0',
    'np.permute_dims': 'NumPy 2.0', 'np.matrix_transpose': 'NumPy 2.0',
    'np.linalg.matrix_transpose': 'NumPy 2.0', 'np.linalg.vector_norm': 'NumPy 2.0',
    'np.linalg.matrix_norm': 'NumPy 2.0', 'np.linalg.cross': 'NumPy 2.0',
    'np.linalg.outer': 'NumPy 2.0', 'np.astype': 'NumPy 2.1', 'np.unstack': 'NumPy 2.1',
    'np.cumulative_sum': 'NumPy 2.1', 'np.cumulative_prod': 'NumPy 2.1',
    'np.long': 'NumPy 2.0', 'np.ulong': 'NumPy 2.0', 'np.pow': 'NumPy 2.0',
    'np.acos': 'NumPy 2.0', 'np.atan2': 'NumPy 2.0', 'np.bitwise_count': 'NumPy 2.0',
    'scipy.spatial.transform.RigidTransform': 'SciPy 1.16',
    'scipy.linalg.cossin': 'SciPy 1.5',  # present in 1.8: a control that the scan resolves
}
#: Names expected in :data:`LATER` that 1.8 does have (the scan's own check needs one).
PRESENT = {'scipy.linalg.cossin'}


def python_files():
    for folder in ('ros_dynamics', 'test', 'benchmarks', 'launch'):
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            for f in files:
                if f.endswith('.py'):
                    yield os.path.join(root, f)


def later_names(source):
    """``(line, name)`` of every use of a :data:`LATER` name (``np`` and ``numpy`` alike) and
    of an ``except*``.
    """
    tree = ast.parse(source)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split('.')[0]] = a.name if a.asname else \
                    a.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                aliases[a.asname or a.name] = f'{node.module}.{a.name}'
    found = []

    def dotted(node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(aliases.get(node.id, node.id))
            return '.'.join(reversed(parts)).replace('numpy.', 'np.', 1) if parts else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.TryStar if hasattr(ast, 'TryStar') else ()):
            found.append((node.lineno, 'except*'))
        if isinstance(node, (ast.Attribute, ast.Name)):
            name = dotted(node)
            if name in LATER and name not in PRESENT:
                found.append((node.lineno, name))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                full = f'{node.module}.{a.name}' if isinstance(node, ast.ImportFrom) and \
                    node.module else a.name
                full = full.replace('numpy.', 'np.', 1)
                if full in LATER and full not in PRESENT:
                    found.append((node.lineno, full))
    return sorted(set(found))


def test_the_scan_finds_what_it_looks_for():
    source = ('import numpy as np\nimport tomllib\nfrom typing import Self\n'
              'from scipy import linalg\nx = np.concat([a, b]) + np.linalg.vecdot(a, b)\n'
              'y = linalg.cossin\nimport numpy\nz = numpy.trapezoid(x)\n')
    assert later_names(source) == [(2, 'tomllib'), (3, 'typing.Self'), (5, 'np.concat'),
                                   (5, 'np.linalg.vecdot'), (8, 'np.trapezoid')]


@pytest.mark.parametrize('path', sorted(python_files()), ids=lambda p: os.path.relpath(p, REPO))
def test_no_file_uses_what_humble_lacks(path):
    with open(path, encoding='utf-8') as f:
        found = later_names(f.read())
    assert found == [], [(line, name, LATER[name]) for line, name in found]
