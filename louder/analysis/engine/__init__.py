"""The engine of an analysis — how it runs, knowing no measure and no statistic: the measures'
registry and declarations (``registry``), the run's dimensions and the one function that derives every
view a measure reads (``select``), the run folder as the measures read it and a measure's context
(``inputs``), the measures' options as the user gives them (``options``), and the analysis with its
cache (``run``)."""
