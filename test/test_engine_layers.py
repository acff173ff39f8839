"""The engine's layering: the model at the bottom, algorithms above it, the facade on top.

Reads every engine module's imports (module-level, function-level and ``TYPE_CHECKING`` ones: a
reader sees them all) and checks them against ``ros_dynamics.engine.LAYERS``; then imports the
model in a fresh interpreter and checks that no algorithm came with it.
"""
import ast
import os
import subprocess
import sys

import pytest

from ros_dynamics import engine

ENGINE_DIR = os.path.dirname(engine.__file__)
PACKAGE_DIR = os.path.dirname(ENGINE_DIR)
LAYER_OF = {module: rank for rank, (_, modules) in enumerate(engine.LAYERS)
            for module in modules}
#: Largest class, in lines, anywhere in the package (issue 27: none over ~350).
MAX_CLASS_LINES = 350


def engine_imports(source: str) -> set:
    """Engine modules a module's source imports (relative ``.x`` / ``from . import x`` or
    absolute ``ros_dynamics.engine.x``).
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level == 1 and base:
                found.add(base.split('.')[0])
            elif node.level == 1:
                found.update(a.name for a in node.names)
            elif base.startswith('ros_dynamics.engine.'):
                found.add(base.split('.')[2])
            elif base == 'ros_dynamics.engine':
                found.update(a.name for a in node.names if a.name in LAYER_OF)
        elif isinstance(node, ast.Import):
            found.update(a.name.split('.')[2] for a in node.names
                         if a.name.startswith('ros_dynamics.engine.'))
    return found


def upward_imports(imports: dict, layer_of: dict) -> list:
    """``(importer, imported)`` pairs where a module imports one from a higher layer."""
    return sorted((m, i) for m, targets in imports.items() for i in targets
                  if layer_of[i] > layer_of[m])


def find_cycle(imports: dict):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 'open'
        stack.append(m)
        for i in sorted(imports.get(m, ())):
            if state.get(i) == 'open':
                return stack[stack.index(i):] + [i]
            if i not in state:
                cycle = visit(i)
                if cycle:
                    return cycle
        state[m] = 'done'
        stack.pop()
        return None

    for m in sorted(imports):
        if m not in state:
            cycle = visit(m)
            if cycle:
                return cycle
    return None


def module_names():
    return sorted(f[:-3] for f in os.listdir(ENGINE_DIR)
                  if f.endswith('.py') and f != '__init__.py')


@pytest.fixture(scope='module')
def imports():
    out = {}
    for name in module_names():
        with open(os.path.join(ENGINE_DIR, name + '.py'), encoding='utf-8') as f:
            out[name] = engine_imports(f.read()) - {name}
    return out


def test_every_engine_module_has_one_layer():
    listed = [m for _, modules in engine.LAYERS for m in modules]
    assert len(listed) == len(set(listed)), 'a module is listed in two layers'
    assert sorted(listed) == module_names()


def test_no_module_imports_a_higher_layer(imports):
    assert upward_imports(imports, LAYER_OF) == []


def test_the_engine_imports_form_no_cycle(imports):
    assert find_cycle(imports) is None


def test_the_model_imports_no_algorithm(imports):
    below_algorithms = {m for m, rank in LAYER_OF.items()
                        if rank < LAYER_OF['kinematics']}
    assert LAYER_OF['model'] < LAYER_OF['kinematics'] < LAYER_OF['robot']
    assert imports['model'] <= below_algorithms


def test_the_checks_find_what_they_look_for():
    """The checkers themselves: an upward import, a cycle and the import forms are seen."""
    layer_of = {'model': 0, 'rnea': 1, 'robot': 2}
    assert upward_imports({'model': {'rnea'}, 'rnea': {'model'}, 'robot': {'rnea'}},
                          layer_of) == [('model', 'rnea')]
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b'}, 'b': set()}) is None
    source = ('from . import rnea, crba\nfrom .aba import forward_dynamics\n'
              'import ros_dynamics.engine.kinematics\n'
              'from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
              '    from .model import Model\n'
              'def f():\n    from ros_dynamics.engine.ik import IKSolver\n')
    assert engine_imports(source) == {'rnea', 'crba', 'aba', 'kinematics', 'model', 'ik'}


def test_importing_the_model_loads_no_algorithm():
    code = ('import sys, ros_dynamics.engine.model\n'
            'print(" ".join(k.rsplit(".", 1)[1] for k in sys.modules '
            'if k.startswith("ros_dynamics.engine.")))')
    loaded = subprocess.run([sys.executable, '-c', code], check=True, capture_output=True,
                            text=True).stdout.split()
    assert 'model' in loaded
    assert [m for m in loaded if LAYER_OF[m] > LAYER_OF['model']] == []


def test_the_public_names_load_and_the_facade_is_the_model():
    for name in engine.__all__:
        assert getattr(engine, name) is not None
    assert issubclass(engine.RobotModel, engine.Model)
    with pytest.raises(AttributeError):
        engine.not_a_name  # noqa: B018


def class_lengths():
    """``(file:class, lines)`` of every class in the package."""
    for root, _, files in os.walk(PACKAGE_DIR):
        for f in files:
            if f.endswith('.py'):
                path = os.path.join(root, f)
                with open(path, encoding='utf-8') as fh:
                    tree = ast.parse(fh.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        rel = os.path.relpath(path, PACKAGE_DIR)
                        yield f'{rel}:{node.name}', node.end_lineno - node.lineno + 1


def test_no_class_is_over_the_size_limit():
    lengths = dict(class_lengths())
    assert 'engine/model.py:Model' in lengths and 'ros/dynamics_node.py:DynamicsNode' in lengths
    assert {k: n for k, n in lengths.items() if n > MAX_CLASS_LINES} == {}


def test_the_model_file_is_small():
    with open(os.path.join(ENGINE_DIR, 'model.py'), encoding='utf-8') as f:
        assert len(f.read().splitlines()) <= MAX_CLASS_LINES
