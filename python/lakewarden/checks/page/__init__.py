"""Static pages of the checks service (plain HTML with inline CSS and JS, so one file per page)."""
