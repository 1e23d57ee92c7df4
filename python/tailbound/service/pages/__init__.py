"""The control plane's web pages (issue 31; docs/service.md, "Web pages"): clusters and their
hosts with their tenants, each tenant's SLO, the Plan's bound, its r-b curves and its measured
percentiles over time with the verdict, the Plan's history with diffs, an admission form, and
replays (``verify``) and side-by-side clusters (``compare``) as charts.

Rendered on the server (Jinja2, :mod:`~tailbound.service.pages.views`), charts as inline SVG
(:mod:`~tailbound.service.pages.charts`), data through the library's and the API's own functions
(:mod:`~tailbound.service.pages.data`); no JavaScript, no build step, no network. Signing in
exchanges an API token for a session cookie (:mod:`tailbound.service.web_session`).
"""

from tailbound.service.pages.views import router

__all__ = ["router"]
