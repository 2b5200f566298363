"""What every tool in tools/ shares, as Google Benchmark's tools/gbench/ is
for its compare.py: the torchbench program's command line and JSON
(program, results), one-line errors (errors), and the environment a
measurement depends on (env).

A script run as `python tools/<tool>.py` has tools/ first on sys.path, so
`from tbench import program` needs no path of its own; tests put tools/ on
theirs."""
