"""Screenshot of a study in the MLflow UI (the README's picture), taken from a real run.

Needs a browser and Playwright, which the project does not depend on:
    apt-get install chromium && pip install playwright
    tuner run                                   # writes ./mlflow.db
    mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5055 &
    python scripts/docs/screenshot_mlflow_ui.py --experiment 1 --out docs/images/mlflow_runs.png
"""

from __future__ import annotations

import argparse

from playwright.sync_api import sync_playwright

COLUMNS = ["Dataset", "Source", "Models",          # hidden (they are on by default)
           "accuracy", "runtime", "g_runtime", "batch_size", "status"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:5055")
    ap.add_argument("--experiment", default="1")
    ap.add_argument("--study", default="cnn-digits", help="the parent run's name")
    ap.add_argument("--out", default="docs/images/mlflow_runs.png")
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                          "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1800, "height": 1000})
        page.goto(f"{args.url}/#/experiments/{args.experiment}/runs")
        page.wait_for_timeout(8000)
        page.get_by_role("button", name="Close").click()              # the assistant panel
        page.get_by_role("button", name="Toggle sidebar").click()
        box = page.get_by_role("link", name=args.study).last.bounding_box()
        page.mouse.click(box["x"] - 28, box["y"] + box["height"] / 2)  # expand the child runs
        page.wait_for_timeout(2000)
        page.get_by_role("button", name="Columns").click()
        search = page.get_by_placeholder("Search columns")
        for name in COLUMNS:
            search.fill(name)
            page.wait_for_timeout(500)
            page.get_by_text(name, exact=True).last.click()
        page.keyboard.press("Escape")
        page.wait_for_timeout(1500)
        page.screenshot(path=args.out)
        browser.close()


if __name__ == "__main__":
    main()
