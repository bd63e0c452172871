"""Checks of `allocator-master serve`'s web page in a real browser: headless Chromium driven
through WebDriver (Debian's chromium-driver) by PyPI's selenium.

Usage: python web_checks.py HOST:PORT CHECK [SCREENSHOT.png]

Prints one JSON line of what the page showed; tests/tests/serve_web.rs starts the master and
asserts on it. A check gives up after 60 s (exit code 3).
"""

import json
import os
import sys
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

MASTER = sys.argv[1]
seen = {}


def done(code=0):
    print(json.dumps(seen))
    sys.stdout.flush()
    os._exit(code)


threading.Timer(60, lambda: done(3)).start()


def browser():
    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    for binary in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(binary):
            options.binary_location = binary
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def wait_for(driver, predicate, timeout=20):
    # The page re-renders its tables every 2 s: an element read just then is stale; try again.
    WebDriverWait(driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(predicate)


def roles(driver):
    # Read in one script call, so a refresh cannot swap the rows out halfway through.
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#roles tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent.trim()));")
    return {cells[0]: {"weight": cells[1], "share": cells[4]} for cells in rows}


def check_cluster():
    """The page loads and shows the cluster of the scenario, then an explanation and a plan."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: d.find_element(By.ID, "status").text == "live")
    wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#agents tbody tr")) > 0)
    seen["title"] = d.title
    seen["agents"] = len(d.find_elements(By.CSS_SELECTOR, "#agents tbody tr"))
    seen["frameworks"] = [r.find_element(By.TAG_NAME, "td").text
                          for r in d.find_elements(By.CSS_SELECTOR, "#frameworks tbody tr")]
    seen["roles"] = roles(d)
    d.find_element(By.CSS_SELECTOR, "#roles a.explain").click()
    wait_for(d, lambda d: "role" in d.find_element(By.ID, "explanation").text)
    seen["explanation"] = d.find_element(By.ID, "explanation").text
    d.find_element(By.CSS_SELECTOR, "#plan button").click()
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#plan-shares tbody tr"))
    seen["plan"] = d.find_element(By.ID, "plan-result").text
    time.sleep(4)  # a few polls: the chart gets lines
    seen["chart_lines"] = len(d.find_elements(By.CSS_SELECTOR, "#chart polyline"))
    if len(sys.argv) > 3:
        d.save_screenshot(sys.argv[3])
    d.quit()
    done()


def check_weight_change():
    """A weight changed through the page changes the weight (and the shares) the page shows."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: "b" in roles(d))
    seen["before"] = roles(d)
    field = d.find_element(By.ID, "weights-json")
    field.clear()
    field.send_keys('{"b": 4}')
    d.find_element(By.CSS_SELECTOR, "#weights button").click()
    wait_for(d, lambda d: "applied" in d.find_element(By.ID, "action-result").text)
    wait_for(d, lambda d: roles(d)["b"]["weight"] == "4")
    time.sleep(6)  # tasks end every 4 s: the freed CPUs go by the new weights
    seen["after"] = roles(d)
    d.quit()
    done()


def check_maintenance():
    """A maintenance window scheduled through the page shows beside its agent."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#agents tbody tr"))
    host = d.find_element(By.ID, "maint-host")
    host.clear()
    host.send_keys("a1")
    d.find_element(By.CSS_SELECTOR, "#maintenance button").click()
    wait_for(d, lambda d: "applied" in d.find_element(By.ID, "action-result").text)
    wait_for(d, lambda d: "from" in d.find_element(By.CSS_SELECTOR, "#agents tbody tr").text)
    seen["agent_row"] = d.find_element(By.CSS_SELECTOR, "#agents tbody tr").text
    d.quit()
    done()


def check_unauthenticated():
    """With authentication on, a visitor without credentials changes nothing."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: d.find_element(By.ID, "status").text != "connecting…")
    seen["status"] = d.find_element(By.ID, "status").text
    d.find_element(By.CSS_SELECTOR, "#weights button").click()
    wait_for(d, lambda d: d.find_element(By.ID, "action-result").text != "")
    seen["action"] = d.find_element(By.ID, "action-result").text
    d.quit()
    done()


if __name__ == "__main__":
    globals()["check_" + sys.argv[2]]()
