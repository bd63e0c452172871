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
    # The performance log holds every request the page sends (with its body): what a form
    # sent is read there, not from the page's own code.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def requests_sent(driver):
    """The requests the page sent since the last call: [{method, path, body}]."""
    out = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        request = message["params"]["request"]
        url = request["url"]
        if not url.startswith("http"):
            continue
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else url
        body = request.get("postData")
        out.append({"method": request["method"], "path": path,
                    "body": json.loads(body) if body else None})
    return out


def writes(sent):
    """The changes among requests sent: every POST but the event stream's SUBSCRIBE."""
    return [r for r in sent if r["method"] != "GET"
            and not (r["path"] == "/api/v1" and (r["body"] or {}).get("type") == "SUBSCRIBE")]


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def type_into(driver, element_id, value):
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(value)


def click(driver, element):
    # In the middle of the window: not under the page's sticky header.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def submit(driver, form):
    click(driver, driver.find_element(By.CSS_SELECTOR, f"#{form} button"))


def confirm(driver, apply=True):
    """Waits for the confirmation and answers it; what it showed."""
    wait_for(driver, lambda d: d.find_element(By.ID, "confirm").is_displayed())
    shown = text(driver, "confirm")
    click(driver, driver.find_element(By.ID, "confirm-apply" if apply else "confirm-cancel"))
    return shown


def result_changes(driver, before):
    wait_for(driver, lambda d: text(d, "action-result") not in ("", before))
    return text(driver, "action-result")


def login_in_view(driver):
    """Whether the login fields are visible inside the window now."""
    return driver.execute_script(
        "const r = document.getElementById('principal').getBoundingClientRect();"
        "return r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight;")


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
    seen["frameworks"] = d.execute_script(
        "return Array.from(document.querySelectorAll('#frameworks tbody tr'))"
        ".map(r => r.cells[0].textContent.trim());")
    seen["roles"] = roles(d)
    def explain(d):
        # The rows are drawn again when they change: a row gone stale is found again.
        d.find_element(By.CSS_SELECTOR, "#roles a.explain").click()
        return True
    wait_for(d, explain)
    wait_for(d, lambda d: "role" in d.find_element(By.ID, "explanation").text)
    seen["explanation"] = d.find_element(By.ID, "explanation").text
    type_into(d, "plan-change", '{"op": "update_weights", "weights": {"b": 3}}')
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
    confirm(d)
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
    type_into(d, "maint-start", "60")
    type_into(d, "maint-duration", "300")
    d.find_element(By.CSS_SELECTOR, "#maintenance button").click()
    confirm(d)
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
    type_into(d, "weights-json", '{"a": 2}')
    d.find_element(By.CSS_SELECTOR, "#weights button").click()
    confirm(d)
    wait_for(d, lambda d: d.find_element(By.ID, "action-result").text != "")
    seen["action"] = d.find_element(By.ID, "action-result").text
    d.quit()
    done()


def check_typed_only():
    """No form sends a value the operator did not type: each form clicked empty sends nothing
    and says what is missing; a cancelled change sends nothing; each change sent holds exactly
    what was typed, after a confirmation that showed before → after."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: "b" in roles(d))
    wait_for(d, lambda d: "random" in d.find_element(By.ID, "sorter-role").get_attribute("placeholder"))
    seen["placeholders"] = {f: d.find_element(By.ID, f).get_attribute("placeholder")
                            for f in ("weights-json", "sorter-role", "sorter-framework")}
    seen["values"] = {f: d.find_element(By.ID, f).get_attribute("value") for f in
                      ("weights-json", "quota-role", "quota-guarantees", "quota-limits",
                       "sorter-role", "sorter-framework", "maint-host", "maint-start",
                       "maint-duration", "plan-change")}
    requests_sent(d)
    seen["empty"] = {}
    last = ""
    for form in ("weights", "quota", "sorters", "maintenance"):
        submit(d, form)
        last = result_changes(d, last)
        seen["empty"][form] = last
    submit(d, "plan")
    wait_for(d, lambda d: text(d, "plan-result") != "")
    seen["empty"]["plan"] = text(d, "plan-result")
    time.sleep(1)
    seen["sent_when_empty"] = writes(requests_sent(d))
    # A change cancelled at its confirmation sends nothing.
    type_into(d, "weights-json", '{"b": 2}')
    submit(d, "weights")
    seen["cancelled_dialog"] = confirm(d, apply=False)
    last = result_changes(d, last)
    seen["cancelled"] = last
    # Only the framework sorter typed.
    type_into(d, "sorter-framework", "drf")
    submit(d, "sorters")
    seen["sorters_dialog"] = confirm(d)
    last = result_changes(d, last)
    seen["sorters"] = last
    # Role a has a guarantee; its limits alone would remove it: refused, saying so.
    type_into(d, "quota-role", "a")
    type_into(d, "quota-limits", "cpus:6")
    submit(d, "quota")
    last = result_changes(d, last)
    seen["quota_refused"] = last
    type_into(d, "quota-role", "b")
    submit(d, "quota")
    seen["quota_dialog"] = confirm(d)
    last = result_changes(d, last)
    seen["quota"] = last
    submit(d, "weights")
    seen["weights_dialog"] = confirm(d)
    last = result_changes(d, last)
    seen["weights"] = last
    time.sleep(1)
    seen["sent"] = [{"path": r["path"], "body": r["body"]} for r in writes(requests_sent(d))]
    d.quit()
    done()


def check_refusal():
    """With authentication on for changes, a change the visitor may not make reads as not
    allowed, with the login fields in view."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: text(d, "status") == "live")
    d.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    type_into(d, "weights-json", '{"a": 2}')
    submit(d, "weights")
    confirm(d)
    seen["action"] = result_changes(d, "")
    seen["login_in_view"] = login_in_view(d)
    seen["focused"] = d.execute_script("return document.activeElement.id")
    d.quit()
    done()


def check_read_refused():
    """With authentication on for reads, the page says it is not allowed to read (not that the
    master is unreachable), with the login fields in view."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: text(d, "status") != "connecting…")
    time.sleep(1)
    seen["status"] = text(d, "status")
    seen["login_in_view"] = login_in_view(d)
    d.quit()
    done()


def cells(driver, selector):
    return driver.execute_script(
        f"return Array.from(document.querySelectorAll('{selector}'))"
        ".map(r => Array.from(r.cells).map(c => ({text: c.textContent.trim(),"
        " kind: c.dataset.kind || null, value: c.dataset.value || null, cls: c.className})))"
        ".map((cs, i) => cs);")


def check_totals():
    """The cluster totals (used / offered / idle per resource) and the tasks by state, as the
    page shows them once every task runs (argv[3]: how many)."""
    d = browser()
    d.get(f"http://{MASTER}/")
    running = sys.argv[3]
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#tasks tr[data-state=TASK_RUNNING]")
             and d.find_element(By.CSS_SELECTOR, "#tasks tr[data-state=TASK_RUNNING] td.num").text == running)
    time.sleep(1)
    d.execute_script("return 0")
    totals = {}
    for row in d.find_elements(By.CSS_SELECTOR, "#totals tbody tr"):
        name = row.get_attribute("data-resource")
        totals[name] = {c.get_attribute("data-kind"): {"value": float(c.get_attribute("data-value")),
                                                       "text": c.text}
                        for c in row.find_elements(By.CSS_SELECTOR, "td[data-kind]")}
    seen["totals"] = totals
    seen["tasks"] = {r.get_attribute("data-state"): int(r.find_element(By.CSS_SELECTOR, "td.num").text)
                     for r in d.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")}
    if len(sys.argv) > 4:
        d.set_window_size(1400, 1000)
        time.sleep(1)
        d.save_screenshot(sys.argv[4])
        seen["overflow"] = d.execute_script(
            "return Array.from(document.querySelectorAll('table')).filter(t => "
            "t.scrollWidth > t.parentElement.clientWidth + 1).map(t => t.id);")
    d.quit()
    done()


def check_history():
    """The chart's samples on the page's first drawing: their first time (the master's history
    reaches back before the page was opened)."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#chart polyline"))
    chart = d.find_element(By.ID, "chart")
    seen["t0"] = float(chart.get_attribute("data-t0"))
    seen["t1"] = float(chart.get_attribute("data-t1"))
    seen["samples"] = int(chart.get_attribute("data-samples"))
    seen["lines"] = len(d.find_elements(By.CSS_SELECTOR, "#chart polyline"))
    d.quit()
    done()


def check_windows():
    """Each agent's maintenance window as the page tells it: past, now or upcoming."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#agents td.maintenance")) >= 3
             and all(c.text for c in d.find_elements(By.CSS_SELECTOR, "#agents td.maintenance")))
    seen["windows"] = {r.get_attribute("data-agent"): {
        "text": r.find_element(By.CSS_SELECTOR, "td.maintenance").text,
        "class": r.find_element(By.CSS_SELECTOR, "td.maintenance").get_attribute("class")}
        for r in d.find_elements(By.CSS_SELECTOR, "#agents tbody tr")}
    d.quit()
    done()


def check_follows():
    """On a quiet cluster the page reads the state when an event comes, not every 2 s: the
    reads of /state in 6 quiet seconds, then how long a framework that subscribes (an operator
    event, FRAMEWORK_ADDED) takes to show."""
    import http.client
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#frameworks tbody tr")) > 0)
    wait_for(d, lambda d: "following" in text(d, "feed"))
    time.sleep(2)  # the read SUBSCRIBED causes (at most one a second), then quiet
    requests_sent(d)
    time.sleep(6)  # the slow poll comes 10 s after the last read
    sent = requests_sent(d)
    seen["quiet_reads"] = len([r for r in sent if r["path"] == "/state"])
    seen["subscribed"] = any(r["path"] == "/api/v1" and (r["body"] or {}).get("type") == "SUBSCRIBE"
                             for r in sent) or "following" in text(d, "feed")
    before = len(d.find_elements(By.CSS_SELECTOR, "#frameworks tbody tr"))
    host, port = MASTER.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"type": "SUBSCRIBE", "subscribe": {"framework_info": {
        "user": "web", "name": "late-fw", "roles": ["c"]}}})
    conn.request("POST", "/api/v1/scheduler", body,
                 {"Content-Type": "application/json", "Accept": "application/json"})
    subscribed_at = time.time()
    response = conn.getresponse()  # kept: the framework stays while its stream is open
    seen["scheduler_status"] = response.status
    wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#frameworks tbody tr")) > before, 9)
    seen["shown_after_s"] = time.time() - subscribed_at
    seen["feed"] = text(d, "feed")
    response.close()
    d.quit()
    done()


def check_favicon():
    """The requests a visit makes: no favicon.ico."""
    d = browser()
    d.get(f"http://{MASTER}/")
    wait_for(d, lambda d: text(d, "status") == "live")
    time.sleep(3)
    seen["paths"] = sorted({r["path"] for r in requests_sent(d)})
    d.quit()
    done()


if __name__ == "__main__":
    globals()["check_" + sys.argv[2]]()
