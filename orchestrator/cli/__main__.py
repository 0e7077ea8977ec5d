"""`python -m orchestrator.cli`."""

from orchestrator.cli import main

if __name__ == "__main__":  # not on import (test_outcomes imports every module)
    main()
