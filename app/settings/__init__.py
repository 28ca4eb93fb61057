"""The chat's settings: a frozen :class:`Settings`, read from and written to a TOML file.

options.py   every setting once: default, help line, what is allowed
settings.py  Settings: the frozen value (and the DecodeConfig it implies)
file.py      load_settings / save_settings: the TOML file, forgiving on read, atomic on write

settings, problems = load_settings()        # problems: one clear line per bad key or value
settings = settings.replace(temperature=0.7)
save_settings(settings)
"""

from app.settings.file import SettingsWriteError, load_settings, save_settings
from app.settings.options import BY_NAME, OPTIONS, Option
from app.settings.settings import Settings

__all__ = ["BY_NAME", "OPTIONS", "Option", "Settings", "SettingsWriteError", "load_settings", "save_settings"]
