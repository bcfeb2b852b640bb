// The playground page: see playground_views.js for the plots.
