"""Check that the installed distributions are the versions a constraints file pins.

Usage: ``check_versions.py CONSTRAINTS NAME [NAME ...]``; exits non-zero when one of the named
distributions is not at its ``name==version`` line, so that tests meant for those versions do
not pass on others by mistake.
"""
from importlib.metadata import version
import sys


def main(constraints, *names):
    """Print the versions of ``names``; exit with a message if one is not the pinned one."""
    pinned = {}
    with open(constraints) as f:
        for line in f:
            name, sep, wanted = line.split('#')[0].strip().partition('==')
            if sep:
                pinned[name.lower()] = wanted
    wrong = [f'{name} {version(name)} (pinned {pinned[name.lower()]})' for name in names
             if version(name) != pinned[name.lower()]]
    print('versions:', ', '.join(f'{name} {version(name)}' for name in names))
    if wrong:
        sys.exit('not the pinned versions: ' + ', '.join(wrong))


if __name__ == '__main__':
    main(*sys.argv[1:])
