// Its own folder: allowed.
