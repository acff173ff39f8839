"""Sphinx directives that write the node reference from the code, so it cannot drift.

``ros-parameters``: one table row per :class:`~ros_dynamics.ros.parameters.ParameterSpec` of
:data:`~ros_dynamics.ros.parameters.PARAMETERS` (name, type, default, unit, range, description).

``engine-modules`` (reStructuredText pages only): an autodoc section per module of
``ros_dynamics/engine``, so a new module has its API page without anyone adding it.

``ros-interfaces``: every topic and service the node's code declares, found by reading the
``ros_dynamics/ros`` sources (``create_publisher`` / ``create_subscription`` / ``create_service``
and the package's own publisher helpers, with the message type each is given). The directive's
body gives each name its description, one ``name: text`` entry per paragraph; a name declared
in the code without a description, or described but not declared, is a build warning (an error
under ``-W``).
"""
import ast
from pathlib import Path
import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.util import logging

import ros_dynamics

LOG = logging.getLogger(__name__)

# The sources of the package imported (the checkout; under rosdoc2, which builds a copy of doc/
# elsewhere, the package on its Python path).
PACKAGE_DIR = Path(ros_dynamics.__file__).resolve().parent
ROS_DIR = PACKAGE_DIR / 'ros'
#: Modules of the other nodes (the simulated robot and the effort controller beside it, in
#: doc/simulation.md): their topics are not the dynamics node's.
OTHER_NODES = ('sim_node.py', 'effort_controller.py', 'small_node.py')
#: Calls that declare a topic or service: function name -> direction.
DECLARING_CALLS = {'create_publisher': 'out', 'output_publisher': 'out', 'publisher': 'out',
                   'create_subscription': 'in', 'create_service': 'service'}


def _inline(text):
    """A paragraph of ``text`` where `quoted` spans become literals (Markdown's code spans)."""
    paragraph = nodes.paragraph()
    for i, part in enumerate(re.split(r'`([^`]*)`', text)):
        if part:
            paragraph += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    return paragraph


def _table(header, rows, widths):
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    group.extend(nodes.colspec(colwidth=w) for w in widths)
    head, body = nodes.thead(), nodes.tbody()
    group += head
    group += body
    for section, lines in ((head, [header]), (body, rows)):
        for line in lines:
            row = nodes.row()
            for cell_text in line:
                entry = nodes.entry()
                entry += _inline(cell_text)
                row += entry
            section += row
    return table


def _type_name(value):
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'double'
    if isinstance(value, str):
        return 'string'
    return _type_name(value[0]) + '[]'       # its length, where fixed, is in the constraints


def _value(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f'{value:g}'
    if isinstance(value, list):
        return '[' + ', '.join(repr(v) if isinstance(v, str) else _value(v) for v in value) + ']'
    return repr(value) if isinstance(value, str) else str(value)


def parameter_rows():
    """Rows (name, type, default, unit, range, description) of every node parameter."""
    from ros_dynamics.ros.parameters import PARAMETERS
    rows = []
    for spec in PARAMETERS:
        span = '' if spec.range is None else f'{_value(spec.range[0])} to {_value(spec.range[1])}'
        text = spec.description + (f'. Must be: {spec.constraints}' if spec.constraints else '')
        text += ' (read-only)' if spec.read_only else ''
        rows.append([f'`{spec.name}`', _type_name(spec.default), f'`{_value(spec.default)}`',
                     spec.unit, span, text])
    return rows


class ParametersDirective(Directive):
    """The table of the node's parameters, from their specifications."""

    def run(self):
        """The table, one row per parameter."""
        return [_table(['Parameter', 'Type', 'Default', 'Unit', 'Range', 'Meaning'],
                       parameter_rows(), [18, 8, 12, 6, 10, 46])]


def _message_types(tree):
    """Names imported from ``<package>.msg`` / ``.srv`` -> ``package/msg/Name``."""
    types = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split('.')[-1] in ('msg', 'srv'):
            for alias in node.names:
                types[alias.asname or alias.name] = node.module.replace('.', '/') + '/' + \
                    alias.name
    return types


def _topic_name(arg):
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):          # f'poses/{token}': a per-tip topic
        return ''.join(v.value if isinstance(v, ast.Constant) else '<tip>' for v in arg.values)
    if isinstance(arg, ast.Call) and arg.args:  # resolve_service_name('~/solve_ik')
        return _topic_name(arg.args[0])
    return None


def declared_interfaces(ros_dir=ROS_DIR):
    """``{name: (type, direction, module)}`` of every topic and service the node declares."""
    found = {}
    for path in sorted(ros_dir.glob('*.py')):
        if path.name in OTHER_NODES:
            continue
        tree = ast.parse(path.read_text(encoding='utf-8'))
        types = _message_types(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, 'id', None)
            # (type, name, ...), or (node, type, name, ...) for output_publisher
            args = [a for a in node.args if not (isinstance(a, ast.Name) and a.id == 'node')]
            if func not in DECLARING_CALLS or len(args) < 2 or \
                    not isinstance(args[0], ast.Name) or args[0].id not in types:
                continue
            kind = args[0]
            name = _topic_name(args[1])
            if name is not None:
                found[name] = (types[kind.id], DECLARING_CALLS[func], path.name)
    return found


class InterfacesDirective(Directive):
    """A table of the topics (or services) the code declares, described by the body."""

    has_content = True
    option_spec = {'services': directives.flag}

    def run(self):
        """The table; a warning per name declared but not described, or the reverse."""
        want_services = 'services' in self.options
        declared = {name: info for name, info in declared_interfaces().items()
                    if (info[1] == 'service') == want_services}
        described = {}
        for block in '\n'.join(self.content).split('\n\n'):
            name, _, text = ' '.join(block.split()).partition(': ')
            if name:
                described[name.strip('`')] = text
        where = self.state.document.current_source
        for name in sorted(set(declared) - set(described)):
            LOG.warning(f'{name} is declared in ros_dynamics/ros/{declared[name][2]} but not '
                        f'described in the node reference', location=(where, self.lineno))
        for name in sorted(set(described) - set(declared)):
            LOG.warning(f'{name} is described in the node reference but declared nowhere in '
                        f'ros_dynamics/ros', location=(where, self.lineno))
        rows = [[f'`{name}`', f'`{declared[name][0]}`',
                 *(() if want_services else (declared[name][1],)), text]
                for name, text in described.items() if name in declared]
        header = ['Service', 'Type', 'What'] if want_services else \
            ['Topic', 'Type', 'Direction', 'Content']
        widths = [18, 22, 60] if want_services else [18, 22, 6, 54]
        return [_table(header, rows, widths)]


class EngineModulesDirective(Directive):
    """A section with ``automodule`` per engine module, in file-name order."""

    def run(self):
        """Insert the sections into the page being read."""
        lines = []
        for path in sorted((PACKAGE_DIR / 'engine').glob('*.py')):
            if path.stem != '__init__':
                title = f'``ros_dynamics.engine.{path.stem}``'
                lines += [title, '-' * len(title), '',
                          f'.. automodule:: ros_dynamics.engine.{path.stem}', '']
        self.state_machine.insert_input(lines, str(PACKAGE_DIR / 'engine'))
        return []


def setup(app):
    """Register the directives with Sphinx."""
    app.add_directive('ros-parameters', ParametersDirective)
    app.add_directive('ros-interfaces', InterfacesDirective)
    app.add_directive('engine-modules', EngineModulesDirective)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
