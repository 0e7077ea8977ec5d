import pytest

from orchestrator.diagnosis import lexicon
from tests.box import box, box_port, clean_box  # noqa: F401


@pytest.fixture
def rules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Classify with the rules alone, without the corpus vocabulary (diagnosis.lexicon).

    For the tests that hold a rule family to its lookalikes: they test the rules' precision.
    The vocabulary reads words, and a lookalike has the words of the cause it is not; its
    precision is measured on real logs instead (tests/test_lexicon.py, cross-validation)."""
    monkeypatch.setattr(lexicon, "lexicon", lambda: None)
