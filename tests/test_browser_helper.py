"""tests/browser.py: without Chromium, its driver or selenium, the browser tests skip naming what to install."""
import builtins

import browser



def test_a_machine_without_chromium_is_told_what_to_install(monkeypatch):
    monkeypatch.setattr(browser, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    monkeypatch.setattr(browser, "DRIVER_CANDIDATES", ("/nonexistent/chromedriver",))
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    needs = browser.missing()
    assert "apt-get install chromium;" in needs and "apt-get install chromium-driver" in needs
    assert "scripts/setup.sh" in needs


def test_a_machine_without_selenium_is_told_to_install_the_dev_extra(monkeypatch):
    real_import = builtins.__import__

    def without_selenium(name, *args, **kwargs):
        if name == "selenium" or name.startswith("selenium."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_selenium)
    assert "selenium (pip install -e '.[dev]')" in browser.missing()
