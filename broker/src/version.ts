// The release version (package.json's; scripts/version.test.ts keeps the two
// equal). No imports: `narad --version` loads only this.
export const NARAD_VERSION = "0.1.0";
