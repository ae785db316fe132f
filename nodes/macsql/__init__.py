"""MAC-SQL's agents: the Selector, the Decomposer and the Refiner."""
