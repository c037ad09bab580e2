# The browser tests' Chromium (sourced): $chromium, or SKIP (exit 77)
# naming the package when none is installed: the tests install nothing.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
	echo "SKIP: chromium is not installed (Debian: apt-get install chromium)"
	exit 77
fi
