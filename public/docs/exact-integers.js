/*
 * A Swagger UI plugin (in the browser) showing a "Try it out" JSON body with exact integers: Swagger UI's
 * JSON.parse/stringify rounds them past 2^53 (swagger-ui issue #2030). LosslessJSON is loaded before it.
 */
/* global LosslessJSON */
(function () {
  'use strict'
  function exactJson (text) {
    try {
      return LosslessJSON.stringify(LosslessJSON.parse(text), null, '  ')
    } catch (e) {
      return null
    }
  }
  window.PetstoreDocs = {
    exactIntegers: function () {
      return {
        wrapComponents: {
          responseBody: function (Original, system) {
            return function ExactResponseBody (props) {
              const React = system.React
              const json = typeof props.content === 'string' && /json/i.test(props.contentType || '')
              const pretty = json ? exactJson(props.content) : null
              if (pretty === null) return React.createElement(Original, props)
              const HighlightCode = props.getComponent('HighlightCode', true)
              return React.createElement('div', null,
                React.createElement('h5', null, 'Response body'),
                React.createElement(HighlightCode, { language: 'json', downloadable: true, fileName: 'response.json', canCopy: true }, pretty))
            }
          }
        }
      }
    }
  }
})()
