"""``python -m adapt.cli``: the ``adapt`` command."""

from adapt.cli import main

main()
