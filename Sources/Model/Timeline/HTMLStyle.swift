extension HTMLReportWriter {
    /// The page's stylesheet, inlined in `<style>`.
    static let css = """
        :root { color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0 auto; padding: 20px 24px 40px; max-width: 1400px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #212529; background: #fff; }
        h1 { font-size: 24px; margin: 0; font-weight: 650; }
        h1 .product { color: #868e96; font-weight: 400; }
        h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #dee2e6; }
        .headline { display: flex; align-items: center; gap: 14px; flex-wrap: wrap; }
        .badge { display: inline-block; padding: 3px 12px; border-radius: 4px; font-weight: 700; letter-spacing: .04em; color: #fff; font-size: 18px; }
        .badge.small { font-size: 12px; padding: 1px 8px; }
        .badge.pass { background: #2f9e44; } .badge.fail { background: #e03131; }
        .tally { color: #495057; }
        .description { margin: 8px 0 4px; font-size: 15px; color: #343a40; max-width: 1100px; }
        .errorbox { margin: 12px 0; padding: 10px 16px 12px; background: #fff5f5; border: 2px solid #e03131; border-left-width: 8px; border-radius: 6px; max-width: 1100px; }
        .errorbox .errorhead { margin: 0 0 6px; color: #c92a2a; font-weight: 700; font-size: 16px; }
        .errorbox dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0; }
        .errorbox dt { color: #862e2e; font-weight: 600; } .errorbox dd { margin: 0; }
        .errorbox dd.message { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; white-space: pre-wrap; }
        .facts { display: flex; flex-wrap: wrap; gap: 4px 28px; margin: 8px 0 0; }
        .facts div { display: flex; gap: 6px; } .facts dt { color: #868e96; } .facts dd { margin: 0; font-weight: 600; }
        .explain { color: #495057; margin: 4px 0 8px; max-width: 1300px; }
        .legend { display: flex; flex-direction: column; gap: 3px; font-size: 13px; margin: 6px 0 10px; padding: 8px 12px; background: #f8f9fa; border-radius: 6px; }
        .legend .lg { display: inline-block; min-width: 190px; font-weight: 600; color: #495057; }
        .swatch { display: inline-block; width: 22px; height: 12px; border-radius: 2px; vertical-align: -1px; margin-left: 8px; }
        .swatch.hatched { background-image: repeating-linear-gradient(45deg, rgba(0,0,0,.3) 0 2px, transparent 2px 4px); }
        .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-left: 8px; }
        .dash { display: inline-block; width: 0; height: 12px; border-left: 2px dashed #495057; margin: 0 4px 0 10px; vertical-align: -1px; }
        .bracket { display: inline-block; width: 26px; height: 6px; border: 1.5px solid #111; border-top: 0; margin: 0 4px 0 10px; vertical-align: 1px; }
        .cross { color: #e03131; font-weight: 700; margin-left: 8px; }
        .line { display: inline-block; width: 20px; height: 3px; vertical-align: 3px; margin-left: 8px; }
        .chartbox { border: 1px solid #dee2e6; border-radius: 6px; padding: 8px 6px 0; }
        svg.chart { display: block; font-family: inherit; }
        svg text { font-size: 11px; fill: #343a40; }
        .grid line { stroke: #e9ecef; stroke-width: 1; }
        .stepband { fill: #f1f3f5; }
        .stepline { stroke: #212529; stroke-width: 1.2; stroke-dasharray: 5 4; opacity: .6; }
        .reaction path { fill: none; stroke: #111; stroke-width: 1.2; }
        .reaction rect { fill: #fff; opacity: .92; }
        .reaction text { text-anchor: middle; font-size: 10px; font-weight: 700; fill: #111; }
        .steplabel { font-weight: 600; font-size: 11.5px; fill: #212529; }
        .lanetitle { font-weight: 650; font-size: 12.5px; fill: #212529; }
        .lanesub { font-size: 10.5px; fill: #868e96; }
        .laneback { fill: #f8f9fa; stroke: #dee2e6; }
        .seglabel { text-anchor: middle; font-size: 11.5px; font-weight: 600; }
        .nodata { font-style: italic; fill: #868e96; }
        .apptick { fill: #212529; opacity: .75; }
        .expline { stroke-width: 1; stroke-dasharray: 2 3; opacity: .7; }
        .explabel { text-anchor: middle; font-size: 10px; font-weight: 700; fill: #fff; }
        .axis line { stroke: #868e96; } .axis text { text-anchor: middle; fill: #495057; }
        .axis .axistitle { text-anchor: start; fill: #868e96; } .axis .axisnote { text-anchor: end; fill: #868e96; }
        .plotback { fill: #fff; stroke: #dee2e6; }
        .failband { fill: #fff5f5; stroke: #ffe3e3; }
        .hgrid { stroke: #e9ecef; }
        .ytick { text-anchor: end; font-size: 10px; fill: #868e96; }
        .rttline { fill: none; stroke-width: 1; opacity: .35; }
        .rttband { stroke: #74c0fc; stroke-width: 2; fill: none; }
        .rttmedian { stroke: #1c7ed6; stroke-width: 1.2; fill: none; }
        .failmark { stroke: #e03131; stroke-width: 1.8; fill: none; }
        .lossarea { fill: #ffa8a8; opacity: .6; } .lossline { fill: none; stroke: #e03131; stroke-width: 1.4; }
        .traceline { fill: none; stroke-width: 1.5; }
        table { border-collapse: collapse; width: 100%; font-size: 13.5px; }
        th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e9ecef; vertical-align: top; }
        th { background: #f1f3f5; font-weight: 600; color: #343a40; }
        th.num { text-align: right; } th.group { text-align: center; border-bottom: 1px solid #dee2e6; }
        td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
        tbody tr:nth-child(even) { background: #fbfcfd; }
        tr.failrow td { background: #fff5f5; } tr.total td { border-top: 2px solid #ced4da; }
        .chip { display: inline-block; padding: 0 7px; border-radius: 3px; font-weight: 600; font-size: 12.5px; }
        .noreact { color: #9c4a00; font-weight: 600; } .noreact .small { color: #868e96; font-weight: 400; }
        .intended { color: #2b8a3e; } .intended .small { color: #868e96; }
        .chart .seam { fill: #fff; fill-opacity: 0.85; }
        .bad { color: #c92a2a; }
        .scope { color: #495057; }
        .muted { color: #868e96; } .small { font-size: 12px; }
        .flaps { margin-top: 10px; }
        details summary { cursor: pointer; color: #495057; font-weight: 600; margin: 20px 0 8px; }
        table.log td { padding: 2px 10px; font-size: 12.5px; }
        footer { margin-top: 28px; color: #868e96; font-size: 12px; }

        """
}
