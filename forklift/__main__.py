"""`python -m forklift` runs the command line."""

from forklift.cli import main

main()
