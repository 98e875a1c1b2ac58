"""A committed scenario file edited for a test: its parsed data changed, written beside the test, loaded; the error
it is refused with (which must name the written file)."""
import pytest
import yaml

from specedge.serving import scenario
from specedge.serving.scenario_schema import ScenarioError


def edited(tmp_path, name: str, edit):
    """``data/scenarios/<name>.yaml`` with ``edit`` applied to its parsed data, written to ``tmp_path/<name>.yaml``."""
    data = yaml.safe_load(scenario.path(name).read_text())
    edit(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def refused(tmp_path, name: str, edit, load) -> str:
    """The message ``load(path)`` refuses the edited scenario with (``edited``), checked to name the file."""
    path = edited(tmp_path, name, edit)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(path) in str(e.value)
    return str(e.value)
