"""Fixtures the unit tests of the serving side share: the zoo's target and smallest draft, loaded once."""
import pytest

from specedge import zoo


@pytest.fixture(scope="session")
def target():
    return zoo.load_model("target-m").eval()


@pytest.fixture(scope="session")
def draft():
    return zoo.load_model("draft-xs").eval()
