"""The TOML settings file: forgiving on read, atomic and comment-keeping on write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.settings import OPTIONS, Settings, SettingsWriteError, load_settings, save_settings


def test_a_missing_file_gives_the_defaults_without_complaint(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "nope.toml") == (Settings(), [])


def test_the_default_path_follows_moa_chat_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "elsewhere.toml"
    monkeypatch.setenv("MOA_CHAT_CONFIG", str(path))
    path.write_text('theme = "nord"\n')
    assert load_settings()[0].theme == "nord"
    assert save_settings(Settings(theme="gruvbox")) == path


def test_good_values_are_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('temperature = 0.7\nmax_tokens = 64\nmode = "local"\nsystem_prompt = """Be\nbrief."""\n')
    settings, problems = load_settings(path)
    assert problems == []
    assert (settings.temperature, settings.max_tokens, settings.mode, settings.system_prompt) == (
        0.7,
        64,
        "local",
        "Be\nbrief.",
    )


def test_each_bad_value_gets_a_message_and_the_default_the_rest_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('temperature = 9\nlink = "56k"\ncolour = "red"\nmax_tokens = 100\n')
    settings, problems = load_settings(path)
    assert settings == Settings(max_tokens=100)
    assert len(problems) == 3
    temperature, link, unknown = problems
    assert str(path) in temperature and "temperature = 9" in temperature and "from 0 to 2" in temperature
    assert "'56k'" in link and "lan, wifi" in link and "default 'lan'" in link
    assert "unknown key 'colour'" in unknown


def test_a_file_that_is_not_toml_gives_one_message_and_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("temperature = = 1\n")
    settings, [problem] = load_settings(path)
    assert settings == Settings()
    assert str(path) in problem and "not valid TOML" in problem


def test_saved_settings_read_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    settings = Settings(system_prompt='Say "hi"\nthen stop.', temperature=0.5, tree="3,2,6", link="4g")
    save_settings(settings, path)
    assert load_settings(path) == (settings, [])
    text = path.read_text()
    for option in OPTIONS:
        assert f"{option.name} = " in text and option.help in text  # every key, with its help


def test_saving_keeps_the_users_comments_and_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# my own note\ntheme = "nord"  # I like it\n')
    save_settings(Settings(theme="gruvbox", max_tokens=99), path)
    text = path.read_text()
    assert "# my own note" in text and "# I like it" in text
    assert load_settings(path)[0].theme == "gruvbox"
    assert load_settings(path)[0].max_tokens == 99


def test_saving_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    save_settings(Settings(), path)
    save_settings(Settings(theme="nord"), path)
    assert os.listdir(tmp_path) == ["config.toml"]


def test_an_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SettingsWriteError, match="--config F"):
        save_settings(Settings(), blocker / "config.toml")


def test_a_server_in_the_file_means_remote_mode_unless_a_mode_is_given(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('server = "ws://verifier:8765"\n')
    assert load_settings(path)[0].mode == "remote"
    path.write_text('server = "ws://verifier:8765"\nmode = "api"\n')
    assert load_settings(path)[0].mode == "api"


def test_stream_is_read_and_saved_as_a_toml_boolean(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("stream = true\n")
    assert load_settings(path) == (Settings(stream=True), [])
    save_settings(Settings(stream=False), path)
    assert "stream = false" in path.read_text() and load_settings(path)[0].stream is False
    path.write_text('stream = "on"\n')
    settings, [problem] = load_settings(path)
    assert settings.stream is False and "stream = 'on'" in problem and "true or false" in problem
