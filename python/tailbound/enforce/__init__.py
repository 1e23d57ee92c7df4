"""Enforcers: turn a :class:`~tailbound.plan.Plan` into the configuration of real systems
(``net``: Linux traffic control and nftables DSCP marks for the network stages)."""
