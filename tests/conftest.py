"""Shared test settings."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The test models are tiny: one thread is as fast, and two threads on a busy 2-core machine
    can be fifty times slower (they spin waiting for each other)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
