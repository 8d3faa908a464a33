/** A failure the plugin reports on one line ("error: ...") before exiting 1. */
export class PluginError extends Error {}
